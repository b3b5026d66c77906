#!/usr/bin/env bash
# build/workload --profile's command line, and tests/torch/profile_reference.py
# (PyTorch's split of a step) without torch or a GPU: over the stand-in torch
# (tests/torch/stub/torch.py, whose profiler reports PyTorch-named kernels of
# known durations) it prints and writes the table of tests/fixtures/profile/,
# the one build/workload's printer is held to (tests/test_wl_profile.c), so
# the two print the same; both languages list the same kinds; it takes
# build/workload's flags and refuses what build/workload's would not give.
#   tests/scripts/test_profile_reference.sh BUILD_DIR
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$here/lib.sh"
build=${1:-build/san}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$root" || exit 2
export PYTHONDONTWRITEBYTECODE=1
pr=tests/torch/profile_reference.py
stub=$root/tests/torch/stub
fix=tests/fixtures/profile
wl=$build/workload
noleak="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"

# ------------------------------------------------------------ build/workload's flags
mlp=(--layers 3 --in 64 --width 32 --out 8 --batch 16)
tfm=(--arch encoder --d-model 64 --heads 4 --enc-layers 2 --ff 128 --seq 32 --batch 8)
refused_wl() { # WHAT ARGS...: exit 2, one line on stderr, nothing on stdout
    local what=$1 err rc
    shift
    err=$(CUDA_VISIBLE_DEVICES='' ASAN_OPTIONS=$noleak "$wl" "$@" 2>&1 >"$tmp/out"); rc=$?
    check_eq "workload $what: exit 2, one line, nothing on stdout" \
        "$rc:$(printf '%s\n' "$err" | wc -l):$(wc -c < "$tmp/out")" "2:1:0"
}
refused_wl "--profile --model-only (MLP)" "${mlp[@]}" --profile --model-only
refused_wl "--profile --model-only (Transformer)" "${tfm[@]}" --profile --model-only
refused_wl "--profile-csv FILE --model-only" "${tfm[@]}" --profile-csv "$tmp/p.csv" --model-only
refused_wl "--profile --verify" --profile --verify
refused_wl "--profile-csv without a value" "${mlp[@]}" --profile-csv
refused_wl "--profile-csv ''" "${mlp[@]}" --profile-csv ''
check "... and no CSV file written" test ! -e "$tmp/p.csv"
CUDA_VISIBLE_DEVICES='' ASAN_OPTIONS=$noleak "$wl" "${mlp[@]}" --profile > /dev/null 2>&1; rc=$?
check_eq "workload --profile without a GPU: waived (77)" "$rc" 77
"$wl" --help > "$tmp/help" 2>&1
check_eq "--help names --profile for the MLP and --profile-csv's CSV" \
    "$(grep -c -e '^  --profile  ' -e '^  --profile-csv FILE' "$tmp/help")" 2
check "--help gives the Transformer --profile too" grep -q -- '--trace, --profile, --profile-csv as above' "$tmp/help"
check_eq "the kinds are the same list in C and in Python" \
    "$(sed -n 's/^ *X([A-Z]*, "\([a-z]*\)").*/\1/p' common/workload/core/wl_profile_table.h | tr '\n' ' ')" \
    "$(cd tests/torch && python3 -c 'import profile_reference as p; print(" ".join(p.KINDS))') "

# ------------------------------------------------------------ profile_reference.py: waivers, bad input
mkdir -p "$tmp/notorch"
echo 'raise ImportError("no torch here")' > "$tmp/notorch/torch.py"
PYTHONPATH=$tmp/notorch python3 "$pr" "${tfm[@]}" > /dev/null 2>&1; rc=$?
check_eq "no torch: waived (77)" "$rc" 77
STUB_NO_CUDA=1 PYTHONPATH=$stub python3 "$pr" "${tfm[@]}" --csv "$tmp/w.csv" > /dev/null 2>&1; rc=$?
check_eq "no CUDA device: waived (77), no CSV" "$rc:$(test -e "$tmp/w.csv" && echo csv)" "77:"
refused() { # WHAT ARGS...: exit 2, one line on stderr, no CSV
    local what=$1 rc
    shift
    PYTHONPATH=$stub python3 "$pr" "$@" > /dev/null 2> "$tmp/err"; rc=$?
    if [ "$rc" -eq 2 ] && [ "$(wc -l < "$tmp/err")" -eq 1 ] && [ ! -e "$tmp/bad.csv" ]; then
        pass "refused: $what ($(cat "$tmp/err"))"
    else failure "refused: $what" "exit $rc; $(head -3 "$tmp/err")"; fi
}
refused "--fused (not eager)" "${tfm[@]}" --fused --csv "$tmp/bad.csv"
refused "--offload" "${tfm[@]}" --offload --csv "$tmp/bad.csv"
refused "--model-only" "${mlp[@]}" --model-only --csv "$tmp/bad.csv"
refused "--steps 0" "${mlp[@]}" --steps 0 --csv "$tmp/bad.csv"
refused "an unknown --arch" --arch rnn --seq 8 --batch 2 --csv "$tmp/bad.csv"
refused "the Transformer without --seq" --arch encoder --batch 2 --csv "$tmp/bad.csv"
refused "the MLP without --layers" --in 4 --width 4 --out 4 --batch 4 --csv "$tmp/bad.csv"
refused "an unknown flag" "${mlp[@]}" --frobnicate 3 --csv "$tmp/bad.csv"
refused "--csv without a value" "${mlp[@]}" --csv
PYTHONPATH=$stub python3 "$pr" "${tfm[@]}" --csv "$tmp/nowhere/bad.csv" > /dev/null 2> "$tmp/err"; rc=$?
check_eq "a CSV in a missing folder: the table, then exit 2 with one line naming it" \
    "$rc:$(tail -1 "$tmp/err" | grep -c "cannot write $tmp/nowhere/bad.csv")" "2:1"

# ------------------------------------------------------------ a run over the stand-in
PYTHONPATH=$stub python3 "$pr" "${tfm[@]}" --csv "$tmp/t.csv" > "$tmp/out" 2> "$tmp/err"; rc=$?
check_eq "the Transformer: exit 0, nothing on stdout" "$rc:$(wc -c < "$tmp/out")" "0:0"
check_eq "a line naming the flags and the step (one after build/workload's default 10)" "$(head -1 "$tmp/err")" \
    "profile: ${tfm[*]} --csv $tmp/t.csv: step 11 (after 10 warm-up steps), 18 GPU activities"
check "the table is tests/fixtures/profile/table.txt (the kernels sorted by name, host events left out)" \
    cmp <(tail -n +2 "$tmp/err") "$fix/table.txt"
check "the CSV is tests/fixtures/profile/table.csv" cmp "$tmp/t.csv" "$fix/table.csv"
check_eq "... written whole: no temporary left" "$(find "$tmp" -maxdepth 1 -name '*.tmp.*' | wc -l)" 0
PYTHONPATH=$stub python3 "$pr" "${mlp[@]}" --optimizer adam --precision fp16 --steps 2 --profile --sms 132 \
    --profile-csv "$tmp/m.csv" > /dev/null 2> "$tmp/err"; rc=$?
check_eq "the MLP with build/workload's --profile, --sms, --profile-csv: exit 0" "$rc" 0
check "... step 3 after --steps 2" grep -q ': step 3 (after 2 warm-up steps)' "$tmp/err"
check "... the same CSV" cmp "$tmp/m.csv" "$fix/table.csv"
# The flags are build/workload's own: it takes the same lines.
CUDA_VISIBLE_DEVICES='' ASAN_OPTIONS=$noleak MEMCLAIMS_MODEL_CHECKS=0 "$wl" "${tfm[@]}" --steps 1 --model-only \
    > /dev/null 2>&1; rc=$?
check_eq "build/workload --model-only takes the Transformer's flags" "$rc" 0
CUDA_VISIBLE_DEVICES='' ASAN_OPTIONS=$noleak "$wl" "${mlp[@]}" --optimizer adam --precision fp16 --steps 2 --sms 132 \
    --model-only > /dev/null 2>&1; rc=$?
check_eq "build/workload --model-only takes the MLP's" "$rc" 0

summary
